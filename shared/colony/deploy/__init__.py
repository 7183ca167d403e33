"""Build-time deployment tooling: bundles and terraform inputs from the registries."""
