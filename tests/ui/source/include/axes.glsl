layout (binding = 0) buffer b { sfpvec4 d[]; };
