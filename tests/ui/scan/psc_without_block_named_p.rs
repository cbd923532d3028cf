vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (constant_id = 0) const int n = 0;
layout (push_constant) uniform parameter { int n; } params;
layout (binding = 0) buffer a_blob { float a[]; };
void main() {
    a[0] = float(psc(n));
}
"#,
}

fn main() {}
