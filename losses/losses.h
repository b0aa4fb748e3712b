// All built-in losses (keras.losses): the base, the registry and every loss class.
#pragma once
#include "losses/crossentropy.h"
#include "losses/loss.h"
#include "losses/regression.h"
