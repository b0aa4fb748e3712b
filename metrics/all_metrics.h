// Every built-in metric (keras.metrics): metrics/metrics.h (base, registry, Mean, accuracies)
// plus the confusion-based, AUC, F-score, IoU and regression metrics.
#pragma once
#include "metrics/auc.h"
#include "metrics/confusion.h"
#include "metrics/fbeta.h"
#include "metrics/iou.h"
#include "metrics/metrics.h"
#include "metrics/regression.h"
