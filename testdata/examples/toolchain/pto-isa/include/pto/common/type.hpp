// Stand-in for the PTO-ISA type header, used by ptojit's examples.
#ifndef PTO_COMMON_TYPE_HPP
#define PTO_COMMON_TYPE_HPP

namespace pto {
enum class Layout { ND, DN, NZ };
}

#endif
