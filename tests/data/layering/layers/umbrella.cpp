// Fixture: a layer including the umbrella header.
#include "keras/keras.h"
