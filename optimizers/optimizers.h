// keras::optimizers — everything a user needs: the built-in optimizers, schedules and registry.
#pragma once
#include "optimizers/adagrad.h"
#include "optimizers/adam.h"
#include "optimizers/adamw.h"
#include "optimizers/loss_scale_optimizer.h"
#include "optimizers/optimizer.h"
#include "optimizers/rmsprop.h"
#include "optimizers/schedules.h"
#include "optimizers/sgd.h"
