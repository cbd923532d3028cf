// A vendor or driver id in `#if` is a variant axis with one variant per number the kernel compares
// it with: tested on its own, it has no number, and that is an error saying how to write it.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { float a[]; };
void main() {
#if ncnn_vendorID
    a[0] = 1.0;
#endif
}
"#,
}

fn main() {}
