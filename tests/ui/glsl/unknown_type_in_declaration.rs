// glslang reports an unknown type in a declaration as a bare syntax error: the message names the
// type (and a near extended type).
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvex4 a_data[]; };
void main() {
}
"#,
}

fn main() {}
