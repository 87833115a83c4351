"""Renderers: text for people, JSON (versioned schemas) for programs."""
