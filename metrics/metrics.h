// All built-in metrics (keras.metrics): the base, the registry, Mean and the accuracies.
#pragma once
#include "metrics/accuracy.h"
#include "metrics/mean.h"
#include "metrics/metric.h"
