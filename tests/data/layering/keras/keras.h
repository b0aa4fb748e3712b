// Fixture: the umbrella header may include every room.
#pragma once
#include "callbacks/callbacks.h"
#include "keras/saving/saving.h"
