vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (set = 1, binding = 0) buffer a_blob { float a[]; };
void main() { a[0] = 1.0; }
"#,
}

fn main() {}
