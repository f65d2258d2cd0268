"""bpy Operators: thin wrappers that parse properties, call one addon function and report."""
