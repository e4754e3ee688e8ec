"""The HTML report: one self-contained page per run (`report`), its timeline (`timeline`,
`timeline_svg`), escaping (`htmlsafe`) and its CSS/JS (`assets/`)."""
