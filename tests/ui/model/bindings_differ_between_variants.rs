vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_blob_data[]; };
#if NCNN_fp16_storage
layout (binding = 1) buffer scratch { sfpvec4 scratch_data[]; };
#endif
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    buffer_st4(a_blob_data, i, buffer_ld4(a_blob_data, i));
#if NCNN_fp16_storage
    buffer_cp4(scratch_data, i, a_blob_data, i);
#endif
}
"#,
}

fn main() {}
