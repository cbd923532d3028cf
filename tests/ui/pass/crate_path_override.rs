// The facade under another name: generated code reaches `__private` through the `crate` path.
use vkprism as vkp;

vkp::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_data[]; };
void main() { buffer_st4(a_data, 0, buffer_ld4(a_data, 1)); }
"#,
    variants: [fp32, fp16s],
    crate: vkp,
}

fn main() {
    assert_eq!(k::VARIANT_NAMES, ["fp32", "fp16s"]);
    let _: &vkp::KernelInfo = &k::INFO;
}
