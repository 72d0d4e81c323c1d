const char *a = getenv("CPP_CRLF"); // want "CPP_CRLF"
/* x
 */ const char *b = getenv(n); // want "dynamic read in <cpp>"
/* want "CPP_CRLF_SPLICE" */ const char *c = getenv("CPP_CRLF_" \
"SPLICE");
