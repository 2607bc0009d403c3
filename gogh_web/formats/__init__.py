"""The site's date formats (FORMAT_MODULE_PATH): Django's English default shows times to the
minute ("Dec. 2, 2026, 2:17 a.m."), which cannot tell apart two events of one scheduling round."""
