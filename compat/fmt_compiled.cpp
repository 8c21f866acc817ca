// {fmt}'s out-of-line code, compiled once for the whole project (memtool_fmt in CMakeLists.txt).
// Debian ships {fmt} as headers and a shared libfmt.so only. Header-only mode keeps our carried
// binaries free of libfmt.so but compiles format-inl.h into every file that formats (92 of them;
// seconds each at -O2 -g): a clean build on 2 cores took 595 s with it, 446 s without. Here it
// is compiled once and linked statically, so libmemtool.so and memtool stay self-contained.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

// The templates format.h declares but defines only in format-inl.h (what every fmt 9 library
// build instantiates): float formatting, and the locale queries for both character types.
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
#ifndef FMT_STATIC_THOUSANDS_SEPARATOR
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
#endif
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;

}  // namespace detail
FMT_END_NAMESPACE
