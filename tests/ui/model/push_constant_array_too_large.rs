vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer b { float d[]; };
layout (push_constant) uniform parameter { float a[1073741824]; } p;
void main() { d[0] = p.a[0]; }
"#,
}

fn main() {}
