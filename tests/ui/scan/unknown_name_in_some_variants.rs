// An extended name checked per variant: a misspelt function inside a branch only the fp16
// storage variants compile rejects those variants, and the error names them.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_data[]; };
void main() {
    const int i = int(gl_GlobalInvocationID.x);
#if NCNN_fp16_storage
    afpvec4 v = buffer_ld3(a_data, i);
#else
    afpvec4 v = buffer_ld4(a_data, i);
#endif
    buffer_st4(a_data, i, v);
}
"#,
}

fn main() {}
