// Axes multiply: float ×4 (scalar storage: no packed variants), int8 ×3, int16 ×3, local memory ×2
// and a device fact ×2 make 144 variants, past the bound; the error names the axes and how to
// choose.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfp a[]; };
layout (binding = 1) buffer b_blob { sint8 b[]; };
layout (binding = 2) buffer c_blob { sint16 c[]; };
void main() {
#if NCNN_shader_local_memory && ncnn_subgroup_basic
    a[0] = a[1];
#endif
}
"#,
}

fn main() {}
