// A kernel whose storage is scalar `sfp` only has no fp16p / fp16pa / bf16p variants (a scalar
// `sfp` is a `float` there): asking for one says why.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfp a_data[]; };
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    buffer_st1(a_data, i, buffer_ld1(a_data, i) * afp(2));
}
"#,
    variants: [fp32, fp16p],
}

fn main() {}
