// A misspelt `NCNN_*` switch would silently be 0 in `#if`: an error listing the switches.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_data[]; };
void main() {
#if NCNN_fp16_storge
    buffer_st4(a_data, 0, afpvec4(1));
#endif
}
"#,
}

fn main() {}
