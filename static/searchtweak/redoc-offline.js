// Redoc's menu footer always renders Redocly's logo from https://cdn.redoc.ly, and no Redoc
// option turns it off. The docs load nothing from elsewhere: that image never gets its
// source, whether set as an attribute or as a property, so no request leaves; CSS hides it.
"use strict";

(function () {
  var LOGO_HOST = "https://cdn.redoc.ly/";
  function isLogo(element, value) {
    return element instanceof HTMLImageElement && String(value).indexOf(LOGO_HOST) === 0;
  }
  var setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    if (String(name).toLowerCase() === "src" && isLogo(this, value)) {
      return undefined;
    }
    return setAttribute.call(this, name, value);
  };
  var src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  Object.defineProperty(HTMLImageElement.prototype, "src", {
    configurable: true,
    enumerable: src.enumerable,
    get: src.get,
    set: function (value) {
      if (!isLogo(this, value)) {
        src.set.call(this, value);
      }
    },
  });
})();
