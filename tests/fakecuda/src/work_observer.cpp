// fakecuda_set_work_observer (control.h): observers are copied and never freed, so work issued
// under an observer that has since been replaced can still report to it.
#include "work_observer.hpp"

#include "driver.hpp"

namespace fakecuda::detail {
std::atomic<const fakecuda_work_observer*> g_work_observer{nullptr};
}  // namespace fakecuda::detail

FAKECUDA_API void fakecuda_set_work_observer(const fakecuda_work_observer* observer) {
  const fakecuda_work_observer* copy = nullptr;
  if (observer != nullptr && observer->issued != nullptr && observer->ran != nullptr) {
    copy = new fakecuda_work_observer(*observer);  // never freed: issued work may still point at it
  }
  fakecuda::detail::g_work_observer.store(copy, std::memory_order_release);
}
