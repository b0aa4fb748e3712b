// Fixture: a source file left directly in keras/, outside every room.
#include "callbacks/callbacks.h"
