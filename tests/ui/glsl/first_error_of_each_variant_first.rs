// Errors come out with each variant's first error first (its likeliest cause), then the rest by
// line: the fp16-storage variants' first error (line 14) comes before the other variants' second
// one (line 12).
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfp a_data[]; };
void main() {
#if !NCNN_fp16_storage
    first_elsewhere = 1;
    second_elsewhere = 2;
#else
    first_in_fp16_storage = 3;
#endif
}
"#,
}

fn main() {}
