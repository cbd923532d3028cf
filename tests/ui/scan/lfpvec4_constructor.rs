// A constructor on a packed shared type converts values instead of packing them: an error that
// names the function to use.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (local_size_x = 64) in;
layout (binding = 0) buffer a_blob { sfpvec4 a_data[]; };
shared lfpvec4 tmp[64];
void main() {
    const int l = int(gl_LocalInvocationID.x);
    afpvec4 v = buffer_ld4(a_data, l) * afp(2);
    tmp[l] = lfpvec4(v);
    barrier();
    buffer_st4(a_data, l, lfp2afpvec4(tmp[63 - l]));
}
"#,
}

fn main() {}
