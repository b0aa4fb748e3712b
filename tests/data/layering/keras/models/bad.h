// Fixture: models/ reaching up into saving/, once by path and once relatively.
#pragma once
#include "keras/saving/saving.h"
#include "../saving/weights_io.h"
