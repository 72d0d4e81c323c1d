// Stand-in for the PTO-ISA instruction header, used by ptojit's examples.
#ifndef PTO_INST_HPP
#define PTO_INST_HPP

#include "pto/common/type.hpp"

#endif
