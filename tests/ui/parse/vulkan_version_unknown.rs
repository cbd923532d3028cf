vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}",
    vulkan_version: "1.4",
}

fn main() {}
