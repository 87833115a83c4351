"""The link model: will this link line link with GNU ld (bfd), gold, lld or mold."""
