vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { float a[]; };
layout (push_constant) uniform parameter { int n; float scale; } p;
void main() { a[p.n] *= p.scale; }
"#,
}

fn main() {
    let _ = k::PushConstants { n: 1.5, scale: 2.0 };
}
