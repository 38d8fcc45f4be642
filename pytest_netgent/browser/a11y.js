// dom-accessibility-api 0.7.1 (https://github.com/eps1lon/dom-accessibility-api.git), bundled by
// tools/vendor_js.py from its npm package: do not edit, run that again.
//
// MIT License
//
// Copyright (c) 2020 Sebastian Silbermann
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this software and associated documentation files (the "Software"), to deal
// in the Software without restriction, including without limitation the rights
// to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
// copies of the Software, and to permit persons to whom the Software is
// furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in all
// copies or substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
// IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
// FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
// AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
// OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
// SOFTWARE.
const ngA11y = (function () {
  const sources = {
    "accessible-description": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      exports.computeAccessibleDescription = computeAccessibleDescription;
      var _accessibleNameAndDescription = require("./accessible-name-and-description");
      var _util = require("./util");
      function _typeof(o) { "@babel/helpers - typeof"; return _typeof = "function" == typeof Symbol && "symbol" == typeof Symbol.iterator ? function (o) { return typeof o; } : function (o) { return o && "function" == typeof Symbol && o.constructor === Symbol && o !== Symbol.prototype ? "symbol" : typeof o; }, _typeof(o); }
      function ownKeys(e, r) { var t = Object.keys(e); if (Object.getOwnPropertySymbols) { var o = Object.getOwnPropertySymbols(e); r && (o = o.filter(function (r) { return Object.getOwnPropertyDescriptor(e, r).enumerable; })), t.push.apply(t, o); } return t; }
      function _objectSpread(e) { for (var r = 1; r < arguments.length; r++) { var t = null != arguments[r] ? arguments[r] : {}; r % 2 ? ownKeys(Object(t), !0).forEach(function (r) { _defineProperty(e, r, t[r]); }) : Object.getOwnPropertyDescriptors ? Object.defineProperties(e, Object.getOwnPropertyDescriptors(t)) : ownKeys(Object(t)).forEach(function (r) { Object.defineProperty(e, r, Object.getOwnPropertyDescriptor(t, r)); }); } return e; }
      function _defineProperty(obj, key, value) { key = _toPropertyKey(key); if (key in obj) { Object.defineProperty(obj, key, { value: value, enumerable: true, configurable: true, writable: true }); } else { obj[key] = value; } return obj; }
      function _toPropertyKey(t) { var i = _toPrimitive(t, "string"); return "symbol" == _typeof(i) ? i : i + ""; }
      function _toPrimitive(t, r) { if ("object" != _typeof(t) || !t) return t; var e = t[Symbol.toPrimitive]; if (void 0 !== e) { var i = e.call(t, r || "default"); if ("object" != _typeof(i)) return i; throw new TypeError("@@toPrimitive must return a primitive value."); } return ("string" === r ? String : Number)(t); }
      /**
       * @param root
       * @param options
       * @returns
       */
      function computeAccessibleDescription(root) {
        var options = arguments.length > 1 && arguments[1] !== undefined ? arguments[1] : {};
        var description = (0, _util.queryIdRefs)(root, "aria-describedby").map(function (element) {
          return (0, _accessibleNameAndDescription.computeTextAlternative)(element, _objectSpread(_objectSpread({}, options), {}, {
            compute: "description"
          }));
        }).join(" ");

        // TODO: Technically we need to make sure that node wasn't used for the accessible name
        //       This causes `description_1.0_combobox-focusable-manual` to fail

        // https://w3c.github.io/aria/#aria-description
        // mentions that aria-description should only be calculated if aria-describedby didn't provide
        // a description
        if (description === "") {
          var ariaDescription = root.getAttribute("aria-description");
          description = ariaDescription === null ? "" : ariaDescription;
        }

        // https://www.w3.org/TR/html-aam-1.0/#accessible-name-and-description-computation
        // says for so many elements to use the `title` that we assume all elements are considered
        if (description === "") {
          var title = root.getAttribute("title");
          description = title === null ? "" : title;
        }
        return description;
      }
    },
    "accessible-name-and-description": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      exports.computeTextAlternative = computeTextAlternative;
      var _array = _interopRequireDefault(require("./polyfills/array.from"));
      var _SetLike = _interopRequireDefault(require("./polyfills/SetLike"));
      var _util = require("./util");
      function _interopRequireDefault(obj) { return obj && obj.__esModule ? obj : { default: obj }; }
      /**
       * implements https://w3c.github.io/accname/
       */

      /**
       *  A string of characters where all carriage returns, newlines, tabs, and form-feeds are replaced with a single space, and multiple spaces are reduced to a single space. The string contains only character data; it does not contain any markup.
       */

      /**
       * interface for an options-bag where `window.getComputedStyle` can be mocked
       */

      /**
       *
       * @param {string} string -
       * @returns {FlatString} -
       */
      function asFlatString(s) {
        return s.trim().replace(/\s\s+/g, " ");
      }

      /**
       *
       * @param node -
       * @param options - These are not optional to prevent accidentally calling it without options in `computeAccessibleName`
       * @returns {boolean} -
       */
      function isHidden(node, getComputedStyleImplementation) {
        if (!(0, _util.isElement)(node)) {
          return false;
        }
        if (node.hasAttribute("hidden") || node.getAttribute("aria-hidden") === "true") {
          return true;
        }
        var style = getComputedStyleImplementation(node);
        return style.getPropertyValue("display") === "none" || style.getPropertyValue("visibility") === "hidden";
      }

      /**
       * @param {Node} node -
       * @returns {boolean} - As defined in step 2E of https://w3c.github.io/accname/#mapping_additional_nd_te
       */
      function isControl(node) {
        return (0, _util.hasAnyConcreteRoles)(node, ["button", "combobox", "listbox", "textbox"]) || hasAbstractRole(node, "range");
      }
      function hasAbstractRole(node, role) {
        if (!(0, _util.isElement)(node)) {
          return false;
        }
        switch (role) {
          case "range":
            return (0, _util.hasAnyConcreteRoles)(node, ["meter", "progressbar", "scrollbar", "slider", "spinbutton"]);
          default:
            throw new TypeError("No knowledge about abstract role '".concat(role, "'. This is likely a bug :("));
        }
      }

      /**
       * element.querySelectorAll but also considers owned tree
       * @param element
       * @param selectors
       */
      function querySelectorAllSubtree(element, selectors) {
        var elements = (0, _array.default)(element.querySelectorAll(selectors));
        (0, _util.queryIdRefs)(element, "aria-owns").forEach(function (root) {
          // babel transpiles this assuming an iterator
          elements.push.apply(elements, (0, _array.default)(root.querySelectorAll(selectors)));
        });
        return elements;
      }
      function querySelectedOptions(listbox) {
        if ((0, _util.isHTMLSelectElement)(listbox)) {
          // IE11 polyfill
          return listbox.selectedOptions || querySelectorAllSubtree(listbox, "[selected]");
        }
        return querySelectorAllSubtree(listbox, '[aria-selected="true"]');
      }
      function isMarkedPresentational(node) {
        return (0, _util.hasAnyConcreteRoles)(node, _util.presentationRoles);
      }

      /**
       * Elements specifically listed in html-aam
       *
       * We don't need this for `label` or `legend` elements.
       * Their implicit roles already allow "naming from content".
       *
       * sources:
       *
       * - https://w3c.github.io/html-aam/#table-element
       */
      function isNativeHostLanguageTextAlternativeElement(node) {
        return (0, _util.isHTMLTableCaptionElement)(node);
      }

      /**
       * https://w3c.github.io/aria/#namefromcontent
       */
      function allowsNameFromContent(node) {
        return (0, _util.hasAnyConcreteRoles)(node, ["button", "cell", "checkbox", "columnheader", "gridcell", "heading", "label", "legend", "link", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "radio", "row", "rowheader", "switch", "tab", "tooltip", "treeitem"]);
      }

      /**
       * TODO https://github.com/eps1lon/dom-accessibility-api/issues/100
       */
      function isDescendantOfNativeHostLanguageTextAlternativeElement(
      // eslint-disable-next-line @typescript-eslint/no-unused-vars -- not implemented yet
      node) {
        return false;
      }
      function getValueOfTextbox(element) {
        if ((0, _util.isHTMLInputElement)(element) || (0, _util.isHTMLTextAreaElement)(element)) {
          return element.value;
        }
        // https://github.com/eps1lon/dom-accessibility-api/issues/4
        return element.textContent || "";
      }
      function getTextualContent(declaration) {
        var content = declaration.getPropertyValue("content");
        if (/^["'].*["']$/.test(content)) {
          return content.slice(1, -1);
        }
        return "";
      }

      /**
       * https://html.spec.whatwg.org/multipage/forms.html#category-label
       * TODO: form-associated custom elements
       * @param element
       */
      function isLabelableElement(element) {
        var localName = (0, _util.getLocalName)(element);
        return localName === "button" || localName === "input" && element.getAttribute("type") !== "hidden" || localName === "meter" || localName === "output" || localName === "progress" || localName === "select" || localName === "textarea";
      }

      /**
       * > [...], then the first such descendant in tree order is the label element's labeled control.
       * -- https://html.spec.whatwg.org/multipage/forms.html#labeled-control
       * @param element
       */
      function findLabelableElement(element) {
        if (isLabelableElement(element)) {
          return element;
        }
        var labelableElement = null;
        element.childNodes.forEach(function (childNode) {
          if (labelableElement === null && (0, _util.isElement)(childNode)) {
            var descendantLabelableElement = findLabelableElement(childNode);
            if (descendantLabelableElement !== null) {
              labelableElement = descendantLabelableElement;
            }
          }
        });
        return labelableElement;
      }

      /**
       * Polyfill of HTMLLabelElement.control
       * https://html.spec.whatwg.org/multipage/forms.html#labeled-control
       * @param label
       */
      function getControlOfLabel(label) {
        if (label.control !== undefined) {
          return label.control;
        }
        var htmlFor = label.getAttribute("for");
        if (htmlFor !== null) {
          return label.ownerDocument.getElementById(htmlFor);
        }
        return findLabelableElement(label);
      }

      /**
       * Polyfill of HTMLInputElement.labels
       * https://developer.mozilla.org/en-US/docs/Web/API/HTMLInputElement/labels
       * @param element
       */
      function getLabels(element) {
        var labelsProperty = element.labels;
        if (labelsProperty === null) {
          return labelsProperty;
        }
        if (labelsProperty !== undefined) {
          return (0, _array.default)(labelsProperty);
        }

        // polyfill
        if (!isLabelableElement(element)) {
          return null;
        }
        var document = element.ownerDocument;
        return (0, _array.default)(document.querySelectorAll("label")).filter(function (label) {
          return getControlOfLabel(label) === element;
        });
      }

      /**
       * Gets the contents of a slot used for computing the accname
       * @param slot
       */
      function getSlotContents(slot) {
        // Computing the accessible name for elements containing slots is not
        // currently defined in the spec. This implementation reflects the
        // behavior of NVDA 2020.2/Firefox 81 and iOS VoiceOver/Safari 13.6.
        var assignedNodes = slot.assignedNodes();
        if (assignedNodes.length === 0) {
          // if no nodes are assigned to the slot, it displays the default content
          return (0, _array.default)(slot.childNodes);
        }
        return assignedNodes;
      }

      /**
       * implements https://w3c.github.io/accname/#mapping_additional_nd_te
       * @param root
       * @param options
       * @returns
       */
      function computeTextAlternative(root) {
        var options = arguments.length > 1 && arguments[1] !== undefined ? arguments[1] : {};
        var consultedNodes = new _SetLike.default();
        var computedStyles = typeof Map === "undefined" ? undefined : new Map();
        var window = (0, _util.safeWindow)(root);
        var _options$compute = options.compute,
          compute = _options$compute === void 0 ? "name" : _options$compute,
          _options$computedStyl = options.computedStyleSupportsPseudoElements,
          computedStyleSupportsPseudoElements = _options$computedStyl === void 0 ? options.getComputedStyle !== undefined : _options$computedStyl,
          _options$getComputedS = options.getComputedStyle,
          uncachedGetComputedStyle = _options$getComputedS === void 0 ? window.getComputedStyle.bind(window) : _options$getComputedS,
          _options$hidden = options.hidden,
          hidden = _options$hidden === void 0 ? false : _options$hidden;
        var getComputedStyle = function getComputedStyle(el, pseudoElement) {
          // We don't cache the pseudoElement styles and calls with psuedo elements
          // should use the uncached version instead
          if (pseudoElement !== undefined) {
            throw new Error("use uncachedGetComputedStyle directly for pseudo elements");
          }
          // If Map is not available, it is probably faster to just use the uncached
          // version since a polyfill lookup would be O(n) instead of O(1) and
          // the getComputedStyle function in those environments(e.g. IE11) is fast
          if (computedStyles === undefined) {
            return uncachedGetComputedStyle(el);
          }
          var cachedStyles = computedStyles.get(el);
          if (cachedStyles) {
            return cachedStyles;
          }
          var style = uncachedGetComputedStyle(el, pseudoElement);
          computedStyles.set(el, style);
          return style;
        };

        // 2F.i
        function computeMiscTextAlternative(node, context) {
          var accumulatedText = "";
          if ((0, _util.isElement)(node) && computedStyleSupportsPseudoElements) {
            var pseudoBefore = uncachedGetComputedStyle(node, "::before");
            var beforeContent = getTextualContent(pseudoBefore);
            accumulatedText = "".concat(beforeContent, " ").concat(accumulatedText);
          }

          // FIXME: Including aria-owns is not defined in the spec
          // But it is required in the web-platform-test
          var childNodes = (0, _util.isHTMLSlotElement)(node) ? getSlotContents(node) : (0, _array.default)(node.childNodes).concat((0, _util.queryIdRefs)(node, "aria-owns"));
          childNodes.forEach(function (child) {
            var result = computeTextAlternative(child, {
              isEmbeddedInLabel: context.isEmbeddedInLabel,
              isReferenced: false,
              recursion: true
            });
            // TODO: Unclear why display affects delimiter
            // see https://github.com/w3c/accname/issues/3
            var display = (0, _util.isElement)(child) ? getComputedStyle(child).getPropertyValue("display") : "inline";
            var separator = display !== "inline" ? " " : "";
            // trailing separator for wpt tests
            accumulatedText += "".concat(separator).concat(result).concat(separator);
          });
          if ((0, _util.isElement)(node) && computedStyleSupportsPseudoElements) {
            var pseudoAfter = uncachedGetComputedStyle(node, "::after");
            var afterContent = getTextualContent(pseudoAfter);
            accumulatedText = "".concat(accumulatedText, " ").concat(afterContent);
          }
          return accumulatedText.trim();
        }

        /**
         *
         * @param element
         * @param attributeName
         * @returns A string non-empty string or `null`
         */
        function useAttribute(element, attributeName) {
          var attribute = element.getAttributeNode(attributeName);
          if (attribute !== null && !consultedNodes.has(attribute) && attribute.value.trim() !== "") {
            consultedNodes.add(attribute);
            return attribute.value;
          }
          return null;
        }
        function computeTooltipAttributeValue(node) {
          if (!(0, _util.isElement)(node)) {
            return null;
          }
          return useAttribute(node, "title");
        }
        function computeElementTextAlternative(node) {
          if (!(0, _util.isElement)(node)) {
            return null;
          }

          // https://w3c.github.io/html-aam/#fieldset-and-legend-elements
          if ((0, _util.isHTMLFieldSetElement)(node)) {
            consultedNodes.add(node);
            var children = (0, _array.default)(node.childNodes);
            for (var i = 0; i < children.length; i += 1) {
              var child = children[i];
              if ((0, _util.isHTMLLegendElement)(child)) {
                return computeTextAlternative(child, {
                  isEmbeddedInLabel: false,
                  isReferenced: false,
                  recursion: false
                });
              }
            }
          } else if ((0, _util.isHTMLTableElement)(node)) {
            // https://w3c.github.io/html-aam/#table-element
            consultedNodes.add(node);
            var _children = (0, _array.default)(node.childNodes);
            for (var _i = 0; _i < _children.length; _i += 1) {
              var _child = _children[_i];
              if ((0, _util.isHTMLTableCaptionElement)(_child)) {
                return computeTextAlternative(_child, {
                  isEmbeddedInLabel: false,
                  isReferenced: false,
                  recursion: false
                });
              }
            }
          } else if ((0, _util.isSVGSVGElement)(node)) {
            // https://www.w3.org/TR/svg-aam-1.0/
            consultedNodes.add(node);
            var _children2 = (0, _array.default)(node.childNodes);
            for (var _i2 = 0; _i2 < _children2.length; _i2 += 1) {
              var _child2 = _children2[_i2];
              if ((0, _util.isSVGTitleElement)(_child2)) {
                return _child2.textContent;
              }
            }
            return null;
          } else if ((0, _util.getLocalName)(node) === "img" || (0, _util.getLocalName)(node) === "area") {
            // https://w3c.github.io/html-aam/#area-element
            // https://w3c.github.io/html-aam/#img-element
            var nameFromAlt = useAttribute(node, "alt");
            if (nameFromAlt !== null) {
              return nameFromAlt;
            }
          } else if ((0, _util.isHTMLOptGroupElement)(node)) {
            var nameFromLabel = useAttribute(node, "label");
            if (nameFromLabel !== null) {
              return nameFromLabel;
            }
          }
          if ((0, _util.isHTMLInputElement)(node) && (node.type === "button" || node.type === "submit" || node.type === "reset")) {
            // https://w3c.github.io/html-aam/#input-type-text-input-type-password-input-type-search-input-type-tel-input-type-email-input-type-url-and-textarea-element-accessible-description-computation
            var nameFromValue = useAttribute(node, "value");
            if (nameFromValue !== null) {
              return nameFromValue;
            }

            // TODO: l10n
            if (node.type === "submit") {
              return "Submit";
            }
            // TODO: l10n
            if (node.type === "reset") {
              return "Reset";
            }
          }
          var labels = getLabels(node);
          if (labels !== null && labels.length !== 0) {
            consultedNodes.add(node);
            return (0, _array.default)(labels).map(function (element) {
              return computeTextAlternative(element, {
                isEmbeddedInLabel: true,
                isReferenced: false,
                recursion: true
              });
            }).filter(function (label) {
              return label.length > 0;
            }).join(" ");
          }

          // https://w3c.github.io/html-aam/#input-type-image-accessible-name-computation
          // TODO: wpt test consider label elements but html-aam does not mention them
          // We follow existing implementations over spec
          if ((0, _util.isHTMLInputElement)(node) && node.type === "image") {
            var _nameFromAlt = useAttribute(node, "alt");
            if (_nameFromAlt !== null) {
              return _nameFromAlt;
            }
            var nameFromTitle = useAttribute(node, "title");
            if (nameFromTitle !== null) {
              return nameFromTitle;
            }

            // TODO: l10n
            return "Submit Query";
          }
          if ((0, _util.hasAnyConcreteRoles)(node, ["button"])) {
            // https://www.w3.org/TR/html-aam-1.0/#button-element
            var nameFromSubTree = computeMiscTextAlternative(node, {
              isEmbeddedInLabel: false,
              isReferenced: false
            });
            if (nameFromSubTree !== "") {
              return nameFromSubTree;
            }
          }
          return null;
        }
        function computeTextAlternative(current, context) {
          if (consultedNodes.has(current)) {
            return "";
          }
          // 2A
          if (!hidden && isHidden(current, getComputedStyle) && !context.isReferenced) {
            consultedNodes.add(current);
            return "";
          }

          // 2B
          var labelAttributeNode = (0, _util.isElement)(current) ? current.getAttributeNode("aria-labelledby") : null;
          // TODO: Do we generally need to block query IdRefs of attributes we have already consulted?
          var labelElements = labelAttributeNode !== null && !consultedNodes.has(labelAttributeNode) ? (0, _util.queryIdRefs)(current, "aria-labelledby") : [];
          if (compute === "name" && !context.isReferenced && labelElements.length > 0) {
            // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- Can't be null here otherwise labelElements would be empty
            consultedNodes.add(labelAttributeNode);
            return labelElements.map(function (element) {
              // TODO: Chrome will consider repeated values i.e. use a node multiple times while we'll bail out in computeTextAlternative.
              return computeTextAlternative(element, {
                isEmbeddedInLabel: context.isEmbeddedInLabel,
                isReferenced: true,
                // this isn't recursion as specified, otherwise we would skip
                // `aria-label` in
                // <input id="myself" aria-label="foo" aria-labelledby="myself"
                recursion: false
              });
            }).join(" ");
          }

          // 2C
          // Changed from the spec in anticipation of https://github.com/w3c/accname/issues/64
          // spec says we should only consider skipping if we have a non-empty label
          var skipToStep2E = context.recursion && isControl(current) && compute === "name";
          if (!skipToStep2E) {
            var ariaLabel = ((0, _util.isElement)(current) && current.getAttribute("aria-label") || "").trim();
            if (ariaLabel !== "" && compute === "name") {
              consultedNodes.add(current);
              return ariaLabel;
            }

            // 2D
            if (!isMarkedPresentational(current)) {
              var elementTextAlternative = computeElementTextAlternative(current);
              if (elementTextAlternative !== null) {
                consultedNodes.add(current);
                return elementTextAlternative;
              }
            }
          }

          // special casing, cheating to make tests pass
          // https://github.com/w3c/accname/issues/67
          if ((0, _util.hasAnyConcreteRoles)(current, ["menu"])) {
            consultedNodes.add(current);
            return "";
          }

          // 2E
          if (skipToStep2E || context.isEmbeddedInLabel || context.isReferenced) {
            if ((0, _util.hasAnyConcreteRoles)(current, ["combobox", "listbox"])) {
              consultedNodes.add(current);
              var selectedOptions = querySelectedOptions(current);
              if (selectedOptions.length === 0) {
                // defined per test `name_heading_combobox`
                return (0, _util.isHTMLInputElement)(current) ? current.value : "";
              }
              return (0, _array.default)(selectedOptions).map(function (selectedOption) {
                return computeTextAlternative(selectedOption, {
                  isEmbeddedInLabel: context.isEmbeddedInLabel,
                  isReferenced: false,
                  recursion: true
                });
              }).join(" ");
            }
            if (hasAbstractRole(current, "range")) {
              consultedNodes.add(current);
              if (current.hasAttribute("aria-valuetext")) {
                // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- safe due to hasAttribute guard
                return current.getAttribute("aria-valuetext");
              }
              if (current.hasAttribute("aria-valuenow")) {
                // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- safe due to hasAttribute guard
                return current.getAttribute("aria-valuenow");
              }
              // Otherwise, use the value as specified by a host language attribute.
              return current.getAttribute("value") || "";
            }
            if ((0, _util.hasAnyConcreteRoles)(current, ["textbox"])) {
              consultedNodes.add(current);
              return getValueOfTextbox(current);
            }
          }

          // 2F: https://w3c.github.io/accname/#step2F
          if (allowsNameFromContent(current) || (0, _util.isElement)(current) && context.isReferenced || isNativeHostLanguageTextAlternativeElement(current) || isDescendantOfNativeHostLanguageTextAlternativeElement(current)) {
            var accumulatedText2F = computeMiscTextAlternative(current, {
              isEmbeddedInLabel: context.isEmbeddedInLabel,
              isReferenced: false
            });
            if (accumulatedText2F !== "") {
              consultedNodes.add(current);
              return accumulatedText2F;
            }
          }
          if (current.nodeType === current.TEXT_NODE) {
            consultedNodes.add(current);
            return current.textContent || "";
          }
          if (context.recursion) {
            consultedNodes.add(current);
            return computeMiscTextAlternative(current, {
              isEmbeddedInLabel: context.isEmbeddedInLabel,
              isReferenced: false
            });
          }
          var tooltipAttributeValue = computeTooltipAttributeValue(current);
          if (tooltipAttributeValue !== null) {
            consultedNodes.add(current);
            return tooltipAttributeValue;
          }

          // TODO should this be reachable?
          consultedNodes.add(current);
          return "";
        }
        return asFlatString(computeTextAlternative(root, {
          isEmbeddedInLabel: false,
          // by spec computeAccessibleDescription starts with the referenced elements as roots
          isReferenced: compute === "description",
          recursion: false
        }));
      }
    },
    "accessible-name": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      exports.computeAccessibleName = computeAccessibleName;
      var _accessibleNameAndDescription = require("./accessible-name-and-description");
      var _util = require("./util");
      /**
       * https://w3c.github.io/aria/#namefromprohibited
       */
      function prohibitsNaming(node) {
        return (0, _util.hasAnyConcreteRoles)(node, ["caption", "code", "deletion", "emphasis", "generic", "insertion", "none", "paragraph", "presentation", "strong", "subscript", "superscript"]);
      }

      /**
       * implements https://w3c.github.io/accname/#mapping_additional_nd_name
       * @param root
       * @param options
       * @returns
       */
      function computeAccessibleName(root) {
        var options = arguments.length > 1 && arguments[1] !== undefined ? arguments[1] : {};
        if (prohibitsNaming(root)) {
          return "";
        }
        return (0, _accessibleNameAndDescription.computeTextAlternative)(root, options);
      }
    },
    "getRole": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      exports.default = getRole;
      exports.getLocalName = getLocalName;
      var _util = require("./util");
      // https://w3c.github.io/html-aria/#document-conformance-requirements-for-use-of-aria-attributes-in-html

      /**
       * Safe Element.localName for all supported environments
       * @param element
       */
      function getLocalName(element) {
        var _element$localName;
        return (// eslint-disable-next-line no-restricted-properties -- actual guard for environments without localName
          (_element$localName = element.localName) !== null && _element$localName !== void 0 ? _element$localName :
          // eslint-disable-next-line no-restricted-properties -- required for the fallback
          element.tagName.toLowerCase()
        );
      }
      var localNameToRoleMappings = {
        article: "article",
        aside: "complementary",
        button: "button",
        datalist: "listbox",
        dd: "definition",
        details: "group",
        dialog: "dialog",
        dt: "term",
        fieldset: "group",
        figure: "figure",
        // WARNING: Only with an accessible name
        form: "form",
        footer: "contentinfo",
        h1: "heading",
        h2: "heading",
        h3: "heading",
        h4: "heading",
        h5: "heading",
        h6: "heading",
        header: "banner",
        hr: "separator",
        html: "document",
        legend: "legend",
        li: "listitem",
        math: "math",
        main: "main",
        menu: "list",
        nav: "navigation",
        ol: "list",
        optgroup: "group",
        // WARNING: Only in certain context
        option: "option",
        output: "status",
        progress: "progressbar",
        // WARNING: Only with an accessible name
        section: "region",
        summary: "button",
        table: "table",
        tbody: "rowgroup",
        textarea: "textbox",
        tfoot: "rowgroup",
        // WARNING: Only in certain context
        td: "cell",
        th: "columnheader",
        thead: "rowgroup",
        tr: "row",
        ul: "list"
      };
      var prohibitedAttributes = {
        caption: new Set(["aria-label", "aria-labelledby"]),
        code: new Set(["aria-label", "aria-labelledby"]),
        deletion: new Set(["aria-label", "aria-labelledby"]),
        emphasis: new Set(["aria-label", "aria-labelledby"]),
        generic: new Set(["aria-label", "aria-labelledby", "aria-roledescription"]),
        insertion: new Set(["aria-label", "aria-labelledby"]),
        none: new Set(["aria-label", "aria-labelledby"]),
        paragraph: new Set(["aria-label", "aria-labelledby"]),
        presentation: new Set(["aria-label", "aria-labelledby"]),
        strong: new Set(["aria-label", "aria-labelledby"]),
        subscript: new Set(["aria-label", "aria-labelledby"]),
        superscript: new Set(["aria-label", "aria-labelledby"])
      };

      /**
       *
       * @param element
       * @param role The role used for this element. This is specified to control whether you want to use the implicit or explicit role.
       */
      function hasGlobalAriaAttributes(element, role) {
        // https://rawgit.com/w3c/aria/stable/#global_states
        // commented attributes are deprecated
        return ["aria-atomic", "aria-busy", "aria-controls", "aria-current", "aria-description", "aria-describedby", "aria-details",
        // "disabled",
        "aria-dropeffect",
        // "errormessage",
        "aria-flowto", "aria-grabbed",
        // "haspopup",
        "aria-hidden",
        // "invalid",
        "aria-keyshortcuts", "aria-label", "aria-labelledby", "aria-live", "aria-owns", "aria-relevant", "aria-roledescription"].some(function (attributeName) {
          var _prohibitedAttributes;
          return element.hasAttribute(attributeName) && !((_prohibitedAttributes = prohibitedAttributes[role]) !== null && _prohibitedAttributes !== void 0 && _prohibitedAttributes.has(attributeName));
        });
      }
      function ignorePresentationalRole(element, implicitRole) {
        // https://rawgit.com/w3c/aria/stable/#conflict_resolution_presentation_none
        return hasGlobalAriaAttributes(element, implicitRole);
      }
      function getRole(element) {
        var explicitRole = getExplicitRole(element);
        if (explicitRole === null || _util.presentationRoles.indexOf(explicitRole) !== -1) {
          var implicitRole = getImplicitRole(element);
          if (_util.presentationRoles.indexOf(explicitRole || "") === -1 || ignorePresentationalRole(element, implicitRole || "")) {
            return implicitRole;
          }
        }
        return explicitRole;
      }
      function getImplicitRole(element) {
        var mappedByTag = localNameToRoleMappings[getLocalName(element)];
        if (mappedByTag !== undefined) {
          return mappedByTag;
        }
        switch (getLocalName(element)) {
          case "a":
          case "area":
          case "link":
            if (element.hasAttribute("href")) {
              return "link";
            }
            break;
          case "img":
            if (element.getAttribute("alt") === "" && !ignorePresentationalRole(element, "img")) {
              return "presentation";
            }
            return "img";
          case "input":
            {
              var _ref = element,
                type = _ref.type;
              switch (type) {
                case "button":
                case "image":
                case "reset":
                case "submit":
                  return "button";
                case "checkbox":
                case "radio":
                  return type;
                case "range":
                  return "slider";
                case "email":
                case "tel":
                case "text":
                case "url":
                  if (element.hasAttribute("list")) {
                    return "combobox";
                  }
                  return "textbox";
                case "search":
                  if (element.hasAttribute("list")) {
                    return "combobox";
                  }
                  return "searchbox";
                case "number":
                  return "spinbutton";
                default:
                  return null;
              }
            }
          case "select":
            if (element.hasAttribute("multiple") || element.size > 1) {
              return "listbox";
            }
            return "combobox";
        }
        return null;
      }
      function getExplicitRole(element) {
        var role = element.getAttribute("role");
        if (role !== null) {
          var explicitRole = role.trim().split(" ")[0];
          // String.prototype.split(sep, limit) will always return an array with at least one member
          // as long as limit is either undefined or > 0
          if (explicitRole.length > 0) {
            return explicitRole;
          }
        }
        return null;
      }
    },
    "index": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      var _exportNames = {
        computeAccessibleDescription: true,
        computeAccessibleName: true,
        getRole: true,
        isDisabled: true
      };
      exports.isDisabled = exports.getRole = exports.computeAccessibleName = exports.computeAccessibleDescription = void 0;
      var _accessibleDescription = require("./accessible-description");
      exports.computeAccessibleDescription = _accessibleDescription.computeAccessibleDescription;
      var _accessibleName = require("./accessible-name");
      exports.computeAccessibleName = _accessibleName.computeAccessibleName;
      var _getRole = _interopRequireDefault(require("./getRole"));
      exports.getRole = _getRole.default;
      var _isInaccessible = require("./is-inaccessible");
      Object.keys(_isInaccessible).forEach(function (key) {
        if (key === "default" || key === "__esModule") return;
        if (Object.prototype.hasOwnProperty.call(_exportNames, key)) return;
        if (key in exports && exports[key] === _isInaccessible[key]) return;
        exports[key] = _isInaccessible[key];
      });
      var _isDisabled = require("./is-disabled");
      exports.isDisabled = _isDisabled.isDisabled;
      function _interopRequireDefault(obj) { return obj && obj.__esModule ? obj : { default: obj }; }
    },
    "is-disabled": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      exports.isDisabled = isDisabled;
      var _getRole = require("./getRole");
      var elementsSupportingDisabledAttribute = new Set(["button", "fieldset", "input", "optgroup", "option", "select", "textarea"]);

      /**
       * Check if an element is disabled
       * https://www.w3.org/TR/html-aam-1.0/#html-attribute-state-and-property-mappings
       * https://www.w3.org/TR/wai-aria-1.1/#aria-disabled
       *
       * @param element
       * @returns {boolean} true if disabled, otherwise false
       */
      function isDisabled(element) {
        var localName = (0, _getRole.getLocalName)(element);
        return elementsSupportingDisabledAttribute.has(localName) && element.hasAttribute("disabled") ? true : element.getAttribute("aria-disabled") === "true";
      }
    },
    "is-inaccessible": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      exports.isInaccessible = isInaccessible;
      exports.isSubtreeInaccessible = isSubtreeInaccessible;
      /**
       * Partial implementation https://www.w3.org/TR/wai-aria-1.2/#tree_exclusion
       * which should only be used for elements with a non-presentational role i.e.
       * `role="none"` and `role="presentation"` will not be excluded.
       *
       * Implements aria-hidden semantics (i.e. parent overrides child)
       * Ignores "Child Presentational: True" characteristics
       *
       * @param element
       * @param options
       * @returns {boolean} true if excluded, otherwise false
       */
      function isInaccessible(element) {
        var _element$ownerDocumen;
        var options = arguments.length > 1 && arguments[1] !== undefined ? arguments[1] : {};
        var _options$getComputedS = options.getComputedStyle,
          getComputedStyle = _options$getComputedS === void 0 ? (_element$ownerDocumen = element.ownerDocument.defaultView) === null || _element$ownerDocumen === void 0 ? void 0 : _element$ownerDocumen.getComputedStyle : _options$getComputedS,
          _options$isSubtreeIna = options.isSubtreeInaccessible,
          isSubtreeInaccessibleImpl = _options$isSubtreeIna === void 0 ? isSubtreeInaccessible : _options$isSubtreeIna;
        if (typeof getComputedStyle !== "function") {
          throw new TypeError("Owner document of the element needs to have an associated window.");
        }
        // since visibility is inherited we can exit early
        if (getComputedStyle(element).visibility === "hidden") {
          return true;
        }
        var currentElement = element;
        while (currentElement) {
          if (isSubtreeInaccessibleImpl(currentElement, {
            getComputedStyle: getComputedStyle
          })) {
            return true;
          }
          currentElement = currentElement.parentElement;
        }
        return false;
      }
      /**
       *
       * @param element
       * @param options
       * @returns {boolean} - `true` if every child of the element is inaccessible
       */
      function isSubtreeInaccessible(element) {
        var _element$ownerDocumen2;
        var options = arguments.length > 1 && arguments[1] !== undefined ? arguments[1] : {};
        var _options$getComputedS2 = options.getComputedStyle,
          getComputedStyle = _options$getComputedS2 === void 0 ? (_element$ownerDocumen2 = element.ownerDocument.defaultView) === null || _element$ownerDocumen2 === void 0 ? void 0 : _element$ownerDocumen2.getComputedStyle : _options$getComputedS2;
        if (typeof getComputedStyle !== "function") {
          throw new TypeError("Owner document of the element needs to have an associated window.");
        }
        if (element.hidden === true) {
          return true;
        }
        if (element.getAttribute("aria-hidden") === "true") {
          return true;
        }
        if (getComputedStyle(element).display === "none") {
          return true;
        }
        return false;
      }
    },
    "polyfills/Map": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
    },
    "polyfills/SetLike": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      exports.default = void 0;
      function _typeof(o) { "@babel/helpers - typeof"; return _typeof = "function" == typeof Symbol && "symbol" == typeof Symbol.iterator ? function (o) { return typeof o; } : function (o) { return o && "function" == typeof Symbol && o.constructor === Symbol && o !== Symbol.prototype ? "symbol" : typeof o; }, _typeof(o); }
      function _classCallCheck(instance, Constructor) { if (!(instance instanceof Constructor)) { throw new TypeError("Cannot call a class as a function"); } }
      function _defineProperties(target, props) { for (var i = 0; i < props.length; i++) { var descriptor = props[i]; descriptor.enumerable = descriptor.enumerable || false; descriptor.configurable = true; if ("value" in descriptor) descriptor.writable = true; Object.defineProperty(target, _toPropertyKey(descriptor.key), descriptor); } }
      function _createClass(Constructor, protoProps, staticProps) { if (protoProps) _defineProperties(Constructor.prototype, protoProps); if (staticProps) _defineProperties(Constructor, staticProps); Object.defineProperty(Constructor, "prototype", { writable: false }); return Constructor; }
      function _defineProperty(obj, key, value) { key = _toPropertyKey(key); if (key in obj) { Object.defineProperty(obj, key, { value: value, enumerable: true, configurable: true, writable: true }); } else { obj[key] = value; } return obj; }
      function _toPropertyKey(t) { var i = _toPrimitive(t, "string"); return "symbol" == _typeof(i) ? i : i + ""; }
      function _toPrimitive(t, r) { if ("object" != _typeof(t) || !t) return t; var e = t[Symbol.toPrimitive]; if (void 0 !== e) { var i = e.call(t, r || "default"); if ("object" != _typeof(i)) return i; throw new TypeError("@@toPrimitive must return a primitive value."); } return ("string" === r ? String : Number)(t); }
      // for environments without Set we fallback to arrays with unique members
      var SetLike = /*#__PURE__*/function () {
        function SetLike() {
          var items = arguments.length > 0 && arguments[0] !== undefined ? arguments[0] : [];
          _classCallCheck(this, SetLike);
          _defineProperty(this, "items", void 0);
          this.items = items;
        }
        return _createClass(SetLike, [{
          key: "add",
          value: function add(value) {
            if (this.has(value) === false) {
              this.items.push(value);
            }
            return this;
          }
        }, {
          key: "clear",
          value: function clear() {
            this.items = [];
          }
        }, {
          key: "delete",
          value: function _delete(value) {
            var previousLength = this.items.length;
            this.items = this.items.filter(function (item) {
              return item !== value;
            });
            return previousLength !== this.items.length;
          }
        }, {
          key: "forEach",
          value: function forEach(callbackfn) {
            var _this = this;
            this.items.forEach(function (item) {
              callbackfn(item, item, _this);
            });
          }
        }, {
          key: "has",
          value: function has(value) {
            return this.items.indexOf(value) !== -1;
          }
        }, {
          key: "size",
          get: function get() {
            return this.items.length;
          }
        }]);
      }();
      var _default = exports.default = typeof Set === "undefined" ? Set : SetLike;
    },
    "polyfills/array.from": function (module, exports, require) {
      "use strict";

      exports.__esModule = true;
      exports.default = arrayFrom;
      /**
       * @source {https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Array/from#Polyfill}
       * but without thisArg (too hard to type, no need to `this`)
       */
      var toStr = Object.prototype.toString;
      function isCallable(fn) {
        return typeof fn === "function" || toStr.call(fn) === "[object Function]";
      }
      function toInteger(value) {
        var number = Number(value);
        if (isNaN(number)) {
          return 0;
        }
        if (number === 0 || !isFinite(number)) {
          return number;
        }
        return (number > 0 ? 1 : -1) * Math.floor(Math.abs(number));
      }
      var maxSafeInteger = Math.pow(2, 53) - 1;
      function toLength(value) {
        var len = toInteger(value);
        return Math.min(Math.max(len, 0), maxSafeInteger);
      }
      /**
       * Creates an array from an iterable object.
       * @param iterable An iterable object to convert to an array.
       */

      /**
       * Creates an array from an iterable object.
       * @param iterable An iterable object to convert to an array.
       * @param mapfn A mapping function to call on every element of the array.
       * @param thisArg Value of 'this' used to invoke the mapfn.
       */
      function arrayFrom(arrayLike, mapFn) {
        // 1. Let C be the this value.
        // edit(@eps1lon): we're not calling it as Array.from
        var C = Array;

        // 2. Let items be ToObject(arrayLike).
        var items = Object(arrayLike);

        // 3. ReturnIfAbrupt(items).
        if (arrayLike == null) {
          throw new TypeError("Array.from requires an array-like object - not null or undefined");
        }

        // 4. If mapfn is undefined, then let mapping be false.
        // const mapFn = arguments.length > 1 ? arguments[1] : void undefined;

        if (typeof mapFn !== "undefined") {
          // 5. else
          // 5. a If IsCallable(mapfn) is false, throw a TypeError exception.
          if (!isCallable(mapFn)) {
            throw new TypeError("Array.from: when provided, the second argument must be a function");
          }
        }

        // 10. Let lenValue be Get(items, "length").
        // 11. Let len be ToLength(lenValue).
        var len = toLength(items.length);

        // 13. If IsConstructor(C) is true, then
        // 13. a. Let A be the result of calling the [[Construct]] internal method
        // of C with an argument list containing the single item len.
        // 14. a. Else, Let A be ArrayCreate(len).
        var A = isCallable(C) ? Object(new C(len)) : new Array(len);

        // 16. Let k be 0.
        var k = 0;
        // 17. Repeat, while k < len… (also steps a - h)
        var kValue;
        while (k < len) {
          kValue = items[k];
          if (mapFn) {
            A[k] = mapFn(kValue, k);
          } else {
            A[k] = kValue;
          }
          k += 1;
        }
        // 18. Let putStatus be Put(A, "length", len, true).
        A.length = len;
        // 20. Return A.
        return A;
      }
    },
    "polyfills/iterator.d": function (module, exports, require) {
      "use strict";
    },
    "util": function (module, exports, require) {
      "use strict";

      function _typeof(o) { "@babel/helpers - typeof"; return _typeof = "function" == typeof Symbol && "symbol" == typeof Symbol.iterator ? function (o) { return typeof o; } : function (o) { return o && "function" == typeof Symbol && o.constructor === Symbol && o !== Symbol.prototype ? "symbol" : typeof o; }, _typeof(o); }
      exports.__esModule = true;
      exports.hasAnyConcreteRoles = hasAnyConcreteRoles;
      exports.isElement = isElement;
      exports.isHTMLFieldSetElement = isHTMLFieldSetElement;
      exports.isHTMLInputElement = isHTMLInputElement;
      exports.isHTMLLegendElement = isHTMLLegendElement;
      exports.isHTMLOptGroupElement = isHTMLOptGroupElement;
      exports.isHTMLSelectElement = isHTMLSelectElement;
      exports.isHTMLSlotElement = isHTMLSlotElement;
      exports.isHTMLTableCaptionElement = isHTMLTableCaptionElement;
      exports.isHTMLTableElement = isHTMLTableElement;
      exports.isHTMLTextAreaElement = isHTMLTextAreaElement;
      exports.isSVGElement = isSVGElement;
      exports.isSVGSVGElement = isSVGSVGElement;
      exports.isSVGTitleElement = isSVGTitleElement;
      exports.presentationRoles = void 0;
      exports.queryIdRefs = queryIdRefs;
      exports.safeWindow = safeWindow;
      var _getRole = _interopRequireWildcard(require("./getRole"));
      exports.getLocalName = _getRole.getLocalName;
      function _getRequireWildcardCache(e) { if ("function" != typeof WeakMap) return null; var r = new WeakMap(), t = new WeakMap(); return (_getRequireWildcardCache = function _getRequireWildcardCache(e) { return e ? t : r; })(e); }
      function _interopRequireWildcard(e, r) { if (!r && e && e.__esModule) return e; if (null === e || "object" != _typeof(e) && "function" != typeof e) return { default: e }; var t = _getRequireWildcardCache(r); if (t && t.has(e)) return t.get(e); var n = { __proto__: null }, a = Object.defineProperty && Object.getOwnPropertyDescriptor; for (var u in e) if ("default" !== u && {}.hasOwnProperty.call(e, u)) { var i = a ? Object.getOwnPropertyDescriptor(e, u) : null; i && (i.get || i.set) ? Object.defineProperty(n, u, i) : n[u] = e[u]; } return n.default = e, t && t.set(e, n), n; }
      var presentationRoles = exports.presentationRoles = ["presentation", "none"];
      function isElement(node) {
        return node !== null && node.nodeType === node.ELEMENT_NODE;
      }
      function isHTMLTableCaptionElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "caption";
      }
      function isHTMLInputElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "input";
      }
      function isHTMLOptGroupElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "optgroup";
      }
      function isHTMLSelectElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "select";
      }
      function isHTMLTableElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "table";
      }
      function isHTMLTextAreaElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "textarea";
      }
      function safeWindow(node) {
        var _ref = node.ownerDocument === null ? node : node.ownerDocument,
          defaultView = _ref.defaultView;
        if (defaultView === null) {
          throw new TypeError("no window available");
        }
        return defaultView;
      }
      function isHTMLFieldSetElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "fieldset";
      }
      function isHTMLLegendElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "legend";
      }
      function isHTMLSlotElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "slot";
      }
      function isSVGElement(node) {
        return isElement(node) && node.ownerSVGElement !== undefined;
      }
      function isSVGSVGElement(node) {
        return isElement(node) && (0, _getRole.getLocalName)(node) === "svg";
      }
      function isSVGTitleElement(node) {
        return isSVGElement(node) && (0, _getRole.getLocalName)(node) === "title";
      }

      /**
       *
       * @param {Node} node -
       * @param {string} attributeName -
       * @returns {Element[]} -
       */
      function queryIdRefs(node, attributeName) {
        if (isElement(node) && node.hasAttribute(attributeName)) {
          // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- safe due to hasAttribute check
          var ids = node.getAttribute(attributeName).split(" ");

          // Browsers that don't support shadow DOM won't have getRootNode
          var root = node.getRootNode ? node.getRootNode() : node.ownerDocument;
          return ids.map(function (id) {
            return root.getElementById(id);
          }).filter(function (element) {
            return element !== null;
          }
          // TODO: why does this not narrow?
          );
        }
        return [];
      }
      function hasAnyConcreteRoles(node, roles) {
        if (isElement(node)) {
          return roles.indexOf((0, _getRole.default)(node)) !== -1;
        }
        return false;
      }
    },
  };
  const loaded = {};
  function resolve(from, name) {
    const parts = from.split("/").slice(0, -1);
    for (const part of name.replace(/\.js$/, "").split("/")) {
      if (part === "..") parts.pop();
      else if (part !== ".") parts.push(part);
    }
    return parts.join("/");
  }
  function load(name) {
    if (!loaded[name]) {
      const module = {exports: {}};
      loaded[name] = module;
      sources[name](module, module.exports, (wanted) => load(resolve(name, wanted)));
    }
    return loaded[name].exports;
  }
  return load("index");
})();
