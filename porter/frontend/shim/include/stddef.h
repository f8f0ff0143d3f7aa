/* cuport light-mode stub */
#pragma once
namespace std {
typedef unsigned long size_t; typedef long ptrdiff_t; typedef decltype(nullptr) nullptr_t;
template <class E> class initializer_list {
 public:
  const E *begin() const; const E *end() const; unsigned long size() const;
 private:
  const E *b; unsigned long n;
};
}
