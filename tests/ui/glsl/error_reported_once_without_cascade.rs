// One GLSL error: the stubs keep the uses of the kernel's names below from adding more.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_blob_data[]; };
void main() {
    buffer_st4(a_blob_data, 0, undefined_value);
}
"#,
}

fn main() {
    let _names: &[&str] = k::VARIANT_NAMES;
    let _info = &k::INFO;
    let _kernel = k::Kernel;
    let _spec = k::SpecConstants::default();
}
