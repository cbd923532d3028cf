#include "self.glsl"
#include "self.glsl"
#include "self.glsl"
