top = 1
