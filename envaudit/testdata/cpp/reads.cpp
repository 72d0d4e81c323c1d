// Environment reads in C++ and the text that only looks like them.
#include <cstdlib>
#include <string>

// getenv("CPP_LINE_COMMENT")
/* getenv("CPP_BLOCK_COMMENT")
   secure_getenv("CPP_BLOCK_COMMENT_2") */
const char *message = "getenv(\"CPP_STRING\")";
const char *raw = R"(getenv("CPP_RAW_STRING"))";
const char *rawDelim = R"xy(getenv("CPP_RAW_DELIM") )" still inside)xy";
const char quote = '"'; const char *after = getenv("CPP_AFTER_CHAR"); // want "CPP_AFTER_CHAR"
const char *prefixed = u8"getenv(\"CPP_U8_STRING\")";
const wchar_t *wide = L"getenv(\"CPP_WIDE\")";
long big = 1'000'000; const char *sep = getenv("CPP_AFTER_SEPARATOR"); // want "CPP_AFTER_SEPARATOR"

const char *a = getenv("CPP_GETENV"); // want "CPP_GETENV"
const char *b = std::getenv("CPP_STD"); // want "CPP_STD"
const char *c = ::secure_getenv("CPP_SECURE"); // want "CPP_SECURE"
const char *d = getenv ( /* the name */ "CPP_SPACED" ); // want "CPP_SPACED"
const char *e = std::getenv("CPP_" "JOINED"); // want "CPP_JOINED"
const char *f = getenv(u8"CPP_U8_ARGUMENT"); // want "CPP_U8_ARGUMENT"
const char *g = getenv(R"(CPP_RAW_ARGUMENT)"); // want "CPP_RAW_ARGUMENT"
const char *h = getenv("CPP_\x45SCAPED"); // want "CPP_ESCAPED"
const char *i = getenv( // want "CPP_MULTILINE"
    "CPP_MULTI"
    "LINE");

std::string name_of(const std::string &name) {
  return getenv(name.c_str()); // want "dynamic read in <cpp>"
}
const char *j = secure_getenv(variable); // want "dynamic read in <cpp>"
const char *k = getenv(PREFIX "_HOME"); // want "dynamic read in <cpp>"
const char *l = getenv("CPP_" + suffix); // want "dynamic read in <cpp>"
#define READ(x) getenv(x) // want "dynamic read in <cpp>"

// Not calls of getenv.
const char *m = my_getenv("CPP_OTHER_FUNCTION");
auto *n = &getenv;
int getenv_count = 0;
