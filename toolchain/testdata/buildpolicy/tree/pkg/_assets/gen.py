ignored = 1
