// Fixture of the ctest `layering_catches_violations`: data/ reaching up into models/.
#pragma once
#include <vector>
#include "backend/tensor.h"
#include "keras/models/model.h"
