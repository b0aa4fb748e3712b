// The built-in callbacks (keras.callbacks). Callback, CallbackList, History and ProgbarLogger
// live in keras/models/callback.h and keras/models/progbar.h.
#pragma once
#include "callbacks/backup_and_restore.h"
#include "callbacks/csv_logger.h"
#include "callbacks/early_stopping.h"
#include "callbacks/lambda_callback.h"
#include "callbacks/learning_rate_scheduler.h"
#include "callbacks/model_checkpoint.h"
#include "callbacks/reduce_lr_on_plateau.h"
#include "callbacks/terminate_on_nan.h"
