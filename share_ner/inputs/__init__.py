"""Where notes enter: note files and directories (the one note walker), MIMIC CSV exports."""
