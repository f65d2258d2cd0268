"""bpy Panels in Properties ▸ Physics: draw only."""
