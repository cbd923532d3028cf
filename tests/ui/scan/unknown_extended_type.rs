// A type shaped like an extended type that doesn't exist: named, with the nearest ones (glslang
// would only say `syntax error, unexpected IDENTIFIER`).
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_data[]; };
void main() {
    afpvec3 v = afpvec3(buffer_ld4(a_data, 0).rgb);
    buffer_st4(a_data, 1, afpvec4(v, afp(1)));
}
"#,
}

fn main() {}
