"""Real-project link corpus: Debian source packages built here, their link lines mutated and
linked by the four real linkers, compared with ldscope's prediction (issue 11 item 9)."""
