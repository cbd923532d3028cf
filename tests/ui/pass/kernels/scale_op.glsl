afpvec4 scale_op(afpvec4 v, afp s) {
    return v * s;
}
