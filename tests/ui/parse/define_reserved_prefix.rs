vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}",
    define: [("NCNN_fp16_storage", "1"), ("sfpvec4", "vec4")],
}

fn main() {}
