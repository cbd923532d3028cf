// A misspelt extended function gets the nearest known name; `afp2*` is reserved like `sfp2*`.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_data[]; };
shared lfpvec4 tmp[1];
void main() {
    afpvec4 v = buffer_load4(a_data, 0);
    tmp[0] = afp2lfp4(v);
}
"#,
}

fn main() {}
