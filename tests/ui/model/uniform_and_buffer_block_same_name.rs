vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) uniform a { float u; };
layout (binding = 1) buffer a { float d[]; };
void main() { d[0] = u; }
"#,
}

fn main() {}
