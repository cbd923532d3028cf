afpvec4 twice(afpvec4 v) {
    return v * afp(2) + missing_value;
}
