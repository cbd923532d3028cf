// ncnn's device facts vkprism has no specialization constant for would silently be 0 in `#if`:
// an error naming the fact and the ones vkprism has.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { float a[]; };
void main() {
#if ncnn_robustBufferAccess && ncnn_VK_KHR_cooperative_matrix == 0
    a[0] = 1.0;
#endif
}
"#,
}

fn main() {}
