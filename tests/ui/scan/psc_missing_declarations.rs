// `psc(x)` needs both the specialization constant `x` and the member `p.x`: the error names
// the declaration that is missing, not glslang's view of the expansion.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (constant_id = 0) const int h = 0;
layout (binding = 0) buffer a_blob { float a[]; };
layout (push_constant) uniform parameter { int w; } p;
void main() {
    a[0] = float(psc(w) * psc(h));
}
"#,
}

fn main() {}
