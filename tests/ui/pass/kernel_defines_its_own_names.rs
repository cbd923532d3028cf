// Names a kernel defines are its own, whatever their prefix (ncnn kernels define helpers such
// as `sfp2float`), and so are `ncnn_*` names it defines.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
#define sfp2float(v) float(v)
#define ncnn_tile 4
layout (binding = 0) buffer a_blob { sfp a_data[]; };
void main() {
    const int i = int(gl_GlobalInvocationID.x) * ncnn_tile;
    buffer_st1(a_data, i, afp(sfp2float(buffer_ld1(a_data, i + 1))));
}
"#,
}

fn main() {
    // Scalar storage only: no packed variants (they would store fp32).
    assert_eq!(k::VARIANT_NAMES, ["fp32", "fp16s", "fp16sa", "bf16s"]);
}
