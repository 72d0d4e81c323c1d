// Line continuations splice lines before anything else.
/* want "CPP_SPLICED_NAME" */ const char *a = get\
env("CPP_SPLICED_NAME");
// a comment continued \
getenv("CPP_CONTINUED_COMMENT")
/* want "CPP_SPLICED" */ const char *b = getenv("CPP_" \
"SPLICED");
const char *c = getenv("CPP_AFTER_SPLICES"); // want "CPP_AFTER_SPLICES"
